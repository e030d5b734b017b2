# -*- coding: cp1252 -*-  # expect: LB002
# verdict: reject
# A module whose declared encoding Python decodes through the codec registry: code run
# before its import can replace the codec, so its text is not what the check reads.
VALUE = 1
