-- wrk: GET /v1/users/{u}/devices/{d}/experiments/{key} for a random device among the first
-- LOCGATE_DEVICES (`user-I/2`, `device-I`), every one of them exposed before (Labs/experiments).
-- Env: LOCGATE_KEY, LOCGATE_DEVICES, LOCGATE_EXPERIMENT (the experiment's key).
-- As Labs/bench.d/gate.lua: the request is made once with placeholders and cut around them.
local key = os.getenv("LOCGATE_KEY")
local devices = tonumber(os.getenv("LOCGATE_DEVICES") or "1000")
local experiment = os.getenv("LOCGATE_EXPERIMENT") or "primer"
math.randomseed(os.time())
local head, middle, tail
local floor, random = math.floor, math.random
init = function(args)
    local template = wrk.format("GET", "/v1/users/user-{U}/devices/device-{D}/experiments/" .. experiment,
        { ["Authorization"] = "Bearer " .. key })
    local user_at = string.find(template, "{U}", 1, true)
    local device_at = string.find(template, "{D}", 1, true)
    head = string.sub(template, 1, user_at - 1)
    middle = string.sub(template, user_at + 3, device_at - 1)
    tail = string.sub(template, device_at + 3)
end
request = function()
    local i = random(0, devices - 1)
    return head .. floor(i / 2) .. middle .. i .. tail
end
dofile("Labs/bench.d/report.lua")
