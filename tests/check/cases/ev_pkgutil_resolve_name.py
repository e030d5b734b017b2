# verdict: reject
# resolve_name imports whatever module the string names and returns its attribute.
import pkgutil  # expect: LB201
pkgutil.resolve_name("os:system")("touch MARKER")  # expect: LB104
