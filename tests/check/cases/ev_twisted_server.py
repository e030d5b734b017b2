# verdict: reject
# twisted's servers and process spawning.
from twisted.internet import reactor  # expect: LB201
from twisted.web import server  # expect: LB105,LB201
reactor.listenTCP(8080, None)  # expect: LB105
reactor.spawnProcess(None, "/bin/sh", ["sh"])  # expect: LB101
