# verdict: accept
# os.system("rm -rf /") subprocess.run eval( exec(
doc = "import subprocess; os.system('id'); eval('1')"
print('__import__("os")')
