# verdict: reject
import base64
import _xxsubinterpreters as si  # expect: LB103

src = base64.b64decode(b"cHJpbnQoMSk=").decode()
interp = si.create()  # expect: LB103
si.run_string(interp, src)  # expect: LB103
