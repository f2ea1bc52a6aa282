import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { GenerationService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";
import { metricChildren } from "@orvado/core";

// GET /metrics: the edge's own Prometheus metrics (HTTP requests by route and
// status, latency, the process) followed by generation's, fetched over gRPC so
// that it works when the services run as separate processes. The edge keeps its
// own registry, never prom-client's global one: the stack runs every service in
// one process.

export function metricsRoutes(app: FastifyInstance, deps: { generation: Client<typeof GenerationService> }) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "orvado_edge_" });
  const requests = new Counter({
    name: "orvado_edge_http_requests_total",
    help: "HTTP requests answered by the edge, by route pattern and status",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "orvado_edge_http_request_duration_seconds",
    help: "Time from request to response at the edge (image generation waits for the job)",
    labelNames: ["method", "route"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const generationUp = new Gauge({
    name: "orvado_edge_generation_metrics_up",
    help: "1 when generation's metrics were fetched for this scrape, 0 when it could not be reached",
    registers: [registry],
  });

  // Each label set's child made once (metricChildren). Methods are the few Node's parser
  // accepts, routes the registered patterns, statuses the few the edge sends.
  const requestCounter = metricChildren(requests);
  const latencyTimer = metricChildren(latency);
  app.addHook("onResponse", async (request, reply) => {
    // The route pattern, not the URL, so ids and signatures do not explode the label set.
    const route = request.routeOptions.url ?? "unmatched";
    const status = String(reply.statusCode);
    const routeKey = `${request.method} ${route}`;
    requestCounter(`${routeKey} ${status}`, { method: request.method, route, status }).inc();
    latencyTimer(routeKey, { method: request.method, route }).observe(reply.elapsedTime / 1000);
  });

  app.get("/metrics", async (request, reply) => {
    let generationText = "";
    try {
      generationText = (await deps.generation.getMetrics({})).text;
      generationUp.set(1);
    } catch (error) {
      request.log.warn({ err: error }, "generation metrics unavailable");
      generationUp.set(0);
    }
    return reply.type(registry.contentType).send(`${await registry.metrics()}\n${generationText}`);
  });
}
