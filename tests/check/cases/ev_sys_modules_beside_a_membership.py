# verdict: reject
# A membership test next to it does not excuse handing the module table on.
import sys

if "os" in sys.modules:
    mods = [sys.modules]  # expect: LB111
    mods[0]["os"].system("id")
# iterating the table gives names (fp_module_table_names.py); its values are the modules
print([m for m in sys.modules.values()])  # expect: LB111
