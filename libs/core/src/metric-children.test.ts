import { describe, expect, it } from "vitest";
import { metricChildren } from "./metric-children.ts";

// In memory: a stand-in for a prom-client metric that counts the children it makes.
function countingMetric() {
  const made: Record<string, string>[] = [];
  return {
    made,
    labels(values: Record<string, string>) {
      made.push(values);
      return { values };
    },
  };
}

describe("metricChildren", () => {
  it("asks the metric for a key's child once and hands back the same child after", () => {
    const metric = countingMetric();
    const child = metricChildren(metric);
    const first = child("a\nmain", { model: "a", channel: "main" });
    expect(child("a\nmain", { model: "a", channel: "main" })).toBe(first);
    expect(metric.made).toEqual([{ model: "a", channel: "main" }]);
  });

  it("keeps the children of different keys apart, and of different metrics", () => {
    const metric = countingMetric();
    const other = countingMetric();
    const child = metricChildren(metric);
    const otherChild = metricChildren(other);
    expect(child("a", { model: "a" })).not.toBe(child("b", { model: "b" }));
    expect(otherChild("a", { model: "a" })).not.toBe(child("a", { model: "a" }));
    expect(metric.made).toEqual([{ model: "a" }, { model: "b" }]);
    expect(other.made).toEqual([{ model: "a" }]);
  });
});
