# verdict: reject
with open("/etc/cron.d/job", "w") as f:  # expect: LB110
    f.write("* * * * * root id\n")
