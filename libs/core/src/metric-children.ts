/**
 * A Prometheus metric's child for each set of label values, made on first use and
 * kept: prom-client hashes a labels object (its keys sorted) on every inc or
 * observe given one, several times per request at 100 connections. `key` names
 * the label values (the caller joins them); the label sets must be few and come
 * from the service itself (models, channels, route patterns, statuses), never
 * from a client's string.
 */
export function metricChildren<C>(metric: { labels(values: Record<string, string>): C }): (key: string, labels: Record<string, string>) => C {
  const children = new Map<string, C>();
  return (key, labels) => {
    let child = children.get(key);
    if (child === undefined) children.set(key, (child = metric.labels(labels)));
    return child;
  };
}
