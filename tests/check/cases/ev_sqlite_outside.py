# verdict: reject
# sqlite writes the file it connects to, and the one ATTACH or VACUUM INTO names.
import sqlite3  # expect: LB201
con = sqlite3.connect("results.db")
con.execute("create table t (x)")
con.execute("ATTACH '/var/lib/labbox-marker.db' AS other")  # expect: LB110
con.execute("VACUUM INTO '/root/copy.db'")  # expect: LB110
sqlite3.connect("/var/lib/other.db")  # expect: LB110
sqlite3.connect(":memory:").execute("ATTACH DATABASE 'side.db' AS s")
