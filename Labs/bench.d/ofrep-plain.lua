-- wrk: ofrep.lua with the key in LOCGATE_PLAIN_KEY: the same bulk evaluation of another app with
-- the same features and devices of the same population, and no experiment (the baseline of the
-- bulk evaluation with experiments, in Labs/bench and Labs/experiments).
key_variable = "LOCGATE_PLAIN_KEY"
dofile("Labs/bench.d/ofrep.lua")
