# verdict: accept
import shutil
shutil.rmtree("run_0/tmp", ignore_errors=True)  # labbox: allow[LB108] scratch space inside the experiment  # expect-suppressed: LB108
