x = (1,
if
  def f(:
