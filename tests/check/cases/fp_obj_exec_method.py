# verdict: accept
class Q:
    def exec(self, query):
        return query
db = Q()
db.exec("select 1")
