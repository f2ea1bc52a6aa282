import { describe, expect, it } from "vitest";
import { AnswerGate, HOLD_BACK_AT, UNGATED_ANSWER_BYTES, type HeldBackReader } from "./answer-gate.ts";

// The gate alone (no transport): which answers it admits, in what order, and that
// every place comes back.

const KB = 1024;
const settled = async <T>(promise: Promise<T>): Promise<boolean> => {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

/** A gate of one place (1 MiB), its place taken by a job holding `bytes`. */
async function gateWithItsPlaceTaken(bytes: number) {
  const gate = new AnswerGate({ answers: 1, bytes: 1024 * KB });
  const holder = gate.pass();
  await holder.admit(bytes);
  return { gate, holder };
}

describe("AnswerGate", () => {
  it("admits at most `answers` jobs at once; the next waits until one is released, first come first admitted", async () => {
    const gate = new AnswerGate({ answers: 2, bytes: 1024 * KB });
    const [a, b, c, d] = [gate.pass(), gate.pass(), gate.pass(), gate.pass()];
    await a.admit(20 * KB);
    await b.admit(20 * KB);
    const third = c.admit(20 * KB);
    const fourth = d.admit(20 * KB);
    expect(await settled(third)).toBe(false);
    expect(gate.waiting).toBe(2);
    b.release();
    expect(await settled(third)).toBe(true);
    expect(await settled(fourth)).toBe(false);
    a.release();
    expect(await settled(fourth)).toBe(true);
    expect(gate.held).toEqual({ answers: 2, bytes: 40 * KB });
    c.release();
    d.release();
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
  });

  it("bounds the bytes admitted, and admits an answer larger than the limit alone", async () => {
    const gate = new AnswerGate({ answers: 10, bytes: 100 * KB });
    const [small, large, after] = [gate.pass(), gate.pass(), gate.pass()];
    await small.admit(60 * KB);
    const largeIn = large.admit(300 * KB);
    expect(await settled(largeIn)).toBe(false);
    // Behind the large one in line, though it would fit now: no answer jumps the queue.
    const afterIn = after.admit(30 * KB);
    expect(await settled(afterIn)).toBe(false);
    small.release();
    expect(await settled(largeIn)).toBe(true);
    expect(gate.held).toEqual({ answers: 1, bytes: 300 * KB });
    expect(await settled(afterIn)).toBe(false);
    large.release();
    expect(await settled(afterIn)).toBe(true);
    after.release();
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
  });

  it("lets small answers (a polling provider's status) pass without a place", async () => {
    const { gate, holder } = await gateWithItsPlaceTaken(50 * KB);
    const poller = gate.pass();
    await expect(poller.admit(UNGATED_ANSWER_BYTES - 1)).resolves.toBeUndefined();
    expect(gate.held).toEqual({ answers: 1, bytes: 50 * KB });
    holder.release();
  });

  it("never makes a job that holds a place wait again: its further answers add their bytes at once", async () => {
    const gate = new AnswerGate({ answers: 1, bytes: 100 * KB });
    const job = gate.pass();
    await job.admit(80 * KB);
    await job.admit(80 * KB);
    expect(gate.held).toEqual({ answers: 1, bytes: 160 * KB });
    const other = gate.pass();
    const otherIn = other.admit(20 * KB);
    expect(await settled(otherIn)).toBe(false);
    job.release();
    job.release();
    expect(await settled(otherIn)).toBe(true);
    expect(gate.held).toEqual({ answers: 1, bytes: 20 * KB });
    other.release();
  });

  it("gives a job's parallel answers one place: the second waits for the first's admission, not for a place of its own", async () => {
    const { gate, holder } = await gateWithItsPlaceTaken(20 * KB);
    const job = gate.pass();
    const first = job.admit(30 * KB);
    const second = job.admit(40 * KB);
    expect(gate.waiting).toBe(1);
    holder.release();
    await Promise.all([first, second]);
    expect(gate.held).toEqual({ answers: 1, bytes: 70 * KB });
    job.release();
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
  });

  it("takes a waiter whose signal aborts out of line, with the signal's reason, and admits the next", async () => {
    const { gate, holder } = await gateWithItsPlaceTaken(20 * KB);
    const controller = new AbortController();
    const leaving = gate.pass().admit(20 * KB, controller.signal);
    const staying = gate.pass();
    const stayingIn = staying.admit(20 * KB);
    controller.abort(new DOMException("the job's time is up", "TimeoutError"));
    await expect(leaving).rejects.toMatchObject({ name: "TimeoutError" });
    expect(gate.waiting).toBe(1);
    holder.release();
    expect(await settled(stayingIn)).toBe(true);
    staying.release();
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
    await expect(gate.pass().admit(20 * KB, AbortSignal.abort())).resolves.toBeUndefined();
  });

  it("takes a waiting job out of line when it gives up its place, and gives back a place granted after that", async () => {
    const { gate, holder } = await gateWithItsPlaceTaken(20 * KB);
    const job = gate.pass();
    const waiting = job.admit(20 * KB);
    expect(gate.waiting).toBe(1);
    job.release();
    await expect(waiting).rejects.toThrow(/gave back its answer place/);
    expect(gate.waiting).toBe(0);
    // Released in the moment between its admission and the job noting it: the place goes straight back.
    const late = gate.pass();
    const lateIn = late.admit(20 * KB);
    holder.release();
    late.release();
    await expect(lateIn).rejects.toThrow(/gave back its answer place/);
    expect(gate.held).toEqual({ answers: 0, bytes: 0 });
  });

  it("refuses limits that are not whole numbers of at least 1", () => {
    expect(() => new AnswerGate({ answers: 0, bytes: 1024 })).toThrow(/answers limit/);
    expect(() => new AnswerGate({ answers: 4, bytes: 1.5 })).toThrow(/bytes limit/);
  });
});

describe("AnswerGate.holdBack", () => {
  /** A reader that notes its state: reading or stopped. */
  const reader = () => {
    const seen = { reading: true, stops: 0 };
    const handle: HeldBackReader = { stop: () => ((seen.reading = false), seen.stops++), start: () => (seen.reading = true) };
    return { seen, handle };
  };
  /** `count` answers in line behind the taken place, each leaving the line when its controller aborts. */
  const queue = (gate: AnswerGate, count: number) =>
    Array.from({ length: count }, () => {
      const controller = new AbortController();
      gate.enter(20 * KB, controller.signal).catch(() => undefined);
      return controller;
    });

  it("stops the reads of connections still waiting for their answer once HOLD_BACK_AT answers wait, and starts them when none does", async () => {
    const { gate } = await gateWithItsPlaceTaken(20 * KB);
    const [early, late] = [reader(), reader()];
    gate.holdBack(early.handle);
    const line = queue(gate, HOLD_BACK_AT - 1);
    expect(early.seen.reading).toBe(true);
    line.push(...queue(gate, 1));
    expect(early.seen.reading).toBe(false);
    // A connection that comes while the gate holds back is stopped at once.
    gate.holdBack(late.handle);
    expect(late.seen.reading).toBe(false);
    // Fewer waiting is not enough: the reads start again when the line is empty.
    for (const controller of line.slice(1)) controller.abort();
    expect([early.seen.reading, late.seen.reading]).toEqual([false, false]);
    line[0]!.abort();
    expect([early.seen.reading, late.seen.reading]).toEqual([true, true]);
    expect(early.seen.stops).toBe(1);
  });

  it("starts a stopped connection taken out of the set, and leaves alone one taken out while reading", async () => {
    const { gate } = await gateWithItsPlaceTaken(20 * KB);
    const [answered, quiet] = [reader(), reader()];
    const takeOut = gate.holdBack(answered.handle);
    takeOut();
    gate.holdBack(quiet.handle);
    const line = queue(gate, HOLD_BACK_AT);
    expect(answered.seen).toEqual({ reading: true, stops: 0 });
    expect(quiet.seen.reading).toBe(false);
    line.forEach((controller) => controller.abort());
  });

  it("never holds back the connections of a job in line or holding its place: its place goes back only when they answer", async () => {
    const { gate, holder } = await gateWithItsPlaceTaken(20 * KB);
    // The holder's second call still waits for its answer when the line reaches HOLD_BACK_AT.
    const own = reader();
    holder.holdBack(own.handle);
    const line = queue(gate, HOLD_BACK_AT);
    expect(own.seen).toEqual({ reading: true, stops: 0 });
    // A job whose first answer waits in line: its other connections, stopped before, start again.
    const waiting = gate.pass();
    const [before, after] = [reader(), reader()];
    waiting.holdBack(before.handle);
    expect(before.seen.reading).toBe(false);
    const waitingIn = waiting.admit(20 * KB).catch(() => undefined);
    expect(before.seen.reading).toBe(true);
    waiting.holdBack(after.handle);
    expect(after.seen).toEqual({ reading: true, stops: 0 });
    // A job with no place yet is held back as before.
    const other = reader();
    gate.pass().holdBack(other.handle);
    expect(other.seen.reading).toBe(false);
    line.forEach((controller) => controller.abort());
    holder.release();
    await waitingIn;
    waiting.release();
  });
});
