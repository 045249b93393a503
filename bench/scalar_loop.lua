-- (a) scalar loop, Lua 5.4 peer (optional; run only when lua5.4 is installed).
-- os.clock() is CPU time, which for this single-threaded loop equals wall time.
local t0 = os.clock()
local i = 0
local s = 0.0
while i < 1e7 do
  s = s + i * 0.5
  i = i + 1
end
local t1 = os.clock()
print(string.format("result %.17g", s))
print(string.format("time_ns %.0f", (t1 - t0) * 1e9))
