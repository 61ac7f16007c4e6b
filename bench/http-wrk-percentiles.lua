-- wrk's --latency prints 50/75/90/99% only; this prints its p99.9 and max too (microseconds).
done = function(summary, latency, requests)
  for _, p in ipairs({50, 90, 99, 99.9}) do
    io.write(string.format("percentile %g %d\n", p, latency:percentile(p)))
  end
  io.write(string.format("max %d\nrequests %d\nduration_us %d\n", latency.max,
    summary.requests, summary.duration))
end
