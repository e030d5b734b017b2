# verdict: reject
# pkgutil helpers that do import: walk_packages imports every package it finds, and
# iter_importers imports the package of a dotted name it is given.
import pkgutil  # expect: LB201

for info in pkgutil.walk_packages(["."]):  # expect: LB104
    print(info.name)
print(list(pkgutil.iter_importers("json.decoder")))  # expect: LB104
