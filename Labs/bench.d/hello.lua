-- wrk: the trivial JSON route of the same server binary, as the baseline.
dofile("Labs/bench.d/report.lua")
