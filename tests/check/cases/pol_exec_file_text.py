# verdict: accept
# nanoGPT's configurator: a file's text run as code warns (the runtime gate runs it only when
# it is a .py file of the experiment's); any other text is dynamic code.
import sys
from pathlib import Path

exec(open("configurator.py").read())  # expect: LB115
exec(Path(sys.argv[1]).read_text())  # expect: LB115
