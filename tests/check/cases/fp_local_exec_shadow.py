# verdict: accept
exec = print
exec("hello")
