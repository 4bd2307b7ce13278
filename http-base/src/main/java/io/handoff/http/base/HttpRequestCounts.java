package io.handoff.http.base;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.LongAdder;

/** {@code handoff_http_requests_total}: HTTP requests answered, by route and status code (server and router alike). */
public final class HttpRequestCounts
{
    private record RouteStatus(String route, int status) {}

    private final ConcurrentMap<RouteStatus, LongAdder> counts = new ConcurrentHashMap<>();

    public void record(String route, int status)
    {
        counts.computeIfAbsent(new RouteStatus(route, status), key -> new LongAdder()).increment();
    }

    public void render(PrometheusText out)
    {
        out.family("handoff_http_requests_total", "HTTP requests answered, by route and status code.", "counter");
        counts.entrySet().stream()
                .sorted(Map.Entry.comparingByKey(Comparator.comparing(RouteStatus::route).thenComparingInt(RouteStatus::status)))
                .forEach(entry -> {
                    Map<String, String> labels = new LinkedHashMap<>();
                    labels.put("route", entry.getKey().route());
                    labels.put("code", Integer.toString(entry.getKey().status()));
                    out.sample("handoff_http_requests_total", labels, entry.getValue().sum());
                });
    }
}
