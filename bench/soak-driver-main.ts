// One load driver of `npm run bench:soak` in its own process, forked by
// soak-driver.ts: it says it is ready, takes its plan (one IPC message), sends
// its share of the requests, reports its open count every OPEN_REPORT_MS and
// at the end every request's outcome. The parent stops it.
import { OPEN_REPORT_MS, holdShare, type DriverMessage, type DriverPlan } from "./soak-driver.ts";

const send = (message: DriverMessage) => process.send!(message);

// The parent is gone (or done with us): nobody is left to report to.
process.on("disconnect", () => process.exit(0));

process.once("message", async (message) => {
  const plan = message as DriverPlan;
  let open = 0;
  const report = setInterval(() => send({ type: "open", open }), OPEN_REPORT_MS);
  const outcomes = await holdShare(plan, (count) => {
    open = count;
  });
  clearInterval(report);
  send({ type: "open", open });
  send({ type: "done", outcomes });
});

send({ type: "ready" });
