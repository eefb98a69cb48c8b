-- wrk: the trivial JSON route of the same server binary, as the baseline.
dofile("Deploy/bench.d/report.lua")
