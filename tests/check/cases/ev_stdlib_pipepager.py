# verdict: reject
# A standard library helper that starts a process (pydoc's pager runs a shell command).
import pydoc  # expect: LB201
pydoc.pipepager("text", "touch MARKER")  # expect: LB102
show = pydoc.pipepager
show("text", "id")  # expect: LB102
