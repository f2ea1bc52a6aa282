import { describe, expect, it } from "vitest";
import { CircuitBreaker } from "./circuit-breaker.ts";

function clockedBreaker(failureThreshold = 3, cooldownMs = 1000) {
  const clock = { now: 0 };
  return { clock, breaker: new CircuitBreaker({ failureThreshold, cooldownMs, now: () => clock.now }) };
}

describe("the circuit breaker", () => {
  it("stays closed until K consecutive failures, and a success resets the count", () => {
    const { breaker } = clockedBreaker(3);
    breaker.tryPass()!.failed();
    breaker.tryPass()!.failed();
    breaker.tryPass()!.succeeded();
    breaker.tryPass()!.failed();
    breaker.tryPass()!.failed();
    expect(breaker.state).toBe("closed");
    breaker.tryPass()!.failed();
    expect(breaker.state).toBe("open");
    expect(breaker.healthy).toBe(false);
    expect(breaker.tryPass()).toBeNull();
  });

  it("half-opens after the cool-down for exactly one trial; a success closes it", () => {
    const { breaker, clock } = clockedBreaker(1, 1000);
    breaker.tryPass()!.failed();
    expect(breaker.retryInMs).toBe(1000);
    clock.now = 1000;
    expect(breaker.state).toBe("half-open");
    expect(breaker.healthy).toBe(true);
    const trial = breaker.tryPass()!;
    expect(breaker.tryPass()).toBeNull();
    trial.succeeded();
    expect(breaker.state).toBe("closed");
    expect(breaker.tryPass()).not.toBeNull();
  });

  it("reopens for another cool-down when the trial fails", () => {
    const { breaker, clock } = clockedBreaker(2, 500);
    breaker.tryPass()!.failed();
    breaker.tryPass()!.failed();
    clock.now = 600;
    breaker.tryPass()!.failed();
    expect(breaker.state).toBe("open");
    expect(breaker.retryInMs).toBe(500);
  });

  it("settles a token once, whatever is called after", () => {
    const { breaker } = clockedBreaker(1);
    const token = breaker.tryPass()!;
    token.succeeded();
    token.failed();
    expect(breaker.state).toBe("closed");
  });
});

describe("a cancelled pass", () => {
  it("frees the half-open trial without counting a result", () => {
    const clock = { now: 0 };
    const breaker = new CircuitBreaker({ failureThreshold: 1, cooldownMs: 10, now: () => clock.now });
    breaker.tryPass()!.failed();
    clock.now = 10;
    breaker.tryPass()!.cancel();
    expect(breaker.state).toBe("half-open");
    expect(breaker.tryPass()).not.toBeNull();
  });
});
