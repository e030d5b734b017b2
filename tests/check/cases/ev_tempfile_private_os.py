# verdict: reject
# A module's private re-export of os (tempfile does `import os as _os`).
import tempfile
import shutil as sh
tempfile._os.system("touch MARKER")  # expect: LB101
run = tempfile._os.popen
run("id")  # expect: LB101
