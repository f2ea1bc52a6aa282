import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";

// The handler's side of an in-process unary call (direct-transport.ts). Connect's
// createHandlerContext makes two AbortControllers per call and links listeners
// between them and the caller's signal, a large share of an in-process call's CPU
// (docs/design-choices.md#calls-between-services), while few handlers read
// `context.signal`. Here the signal is made only when a handler reads it, and
// the call watches its deadline and its caller itself.

export interface DirectContextInit {
  service: DescService;
  method: DescMethod;
  url: string;
  timeoutMs: number | undefined;
  /** The caller's signal; `unwatched` when the caller gave none. */
  requestSignal: AbortSignal;
  /** The server's own copy of the request headers. */
  requestHeader: Headers;
  contextValues: ContextValues | undefined;
}

export interface DirectCallContext {
  context: HandlerContext;
  /**
   * The handler's result, unless the deadline passes or the caller gives up
   * first: then DeadlineExceeded or Canceled at once, as over the network,
   * while the handler runs on unobserved (its signal, if it asked for one, aborts).
   */
  outcome<T>(result: T | Promise<T>): Promise<T>;
  /** The call is over: the handler's signal ends with it, as on the network. */
  end(): void;
  /**
   * Ends the call when the caller gives up or the deadline passes even between the steps
   * outcome() races (a stream's caller that is not reading), as the network would; returns
   * the function that stops watching.
   */
  watch(): () => void;
}

/** A signal nobody aborts: the caller gave none, so there is nothing to listen to. */
export const UNWATCHED_SIGNAL = new AbortController().signal;
const CALL_ENDED = new ConnectError("the call has ended", Code.Canceled);

export function directCallContext(init: DirectContextInit): DirectCallContext {
  const deadlineAt = init.timeoutMs === undefined ? undefined : Date.now() + init.timeoutMs;
  let controller: AbortController | undefined;
  let endedWith: ConnectError | undefined;
  const endWith = (reason: ConnectError) => {
    endedWith ??= reason;
    controller?.abort(endedWith);
  };

  const context: HandlerContext = {
    service: init.service,
    method: init.method,
    // What the handler would see from any other caller: the server speaks only Connect's protocol in-process and out.
    protocolName: "connect",
    requestMethod: "POST",
    url: init.url,
    requestHeader: init.requestHeader,
    responseHeader: new Headers(),
    responseTrailer: new Headers(),
    values: init.contextValues ?? createContextValues(),
    timeoutMs: () => (deadlineAt === undefined ? undefined : deadlineAt - Date.now()),
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (endedWith) controller.abort(endedWith);
      }
      return controller.signal;
    },
  };

  function outcome<T>(result: T | Promise<T>): Promise<T> {
    const caller = init.requestSignal;
    const canceled = () => ConnectError.from(caller.reason, Code.Canceled);
    const timedOut = () => new ConnectError("the operation timed out", Code.DeadlineExceeded);
    const early = caller.aborted ? canceled() : deadlineAt !== undefined && deadlineAt <= Date.now() ? timedOut() : undefined;
    if (early) {
      endWith(early);
      // The handler's step was already begun: whatever it throws now is no one's to hear, and must not go unhandled.
      if (result instanceof Promise) result.catch(() => {});
      return Promise.reject(early);
    }
    const watchCaller = caller !== UNWATCHED_SIGNAL;
    if (!(result instanceof Promise) || (deadlineAt === undefined && !watchCaller)) return Promise.resolve(result);
    return new Promise<T>((resolve, reject) => {
      // Whichever comes first settles the call and stops watching for the others.
      const stopWatching = () => {
        clearTimeout(timer);
        if (watchCaller) caller.removeEventListener("abort", onAbort);
      };
      const fail = (error: ConnectError) => {
        stopWatching();
        endWith(error);
        reject(error);
      };
      const onAbort = () => fail(canceled());
      const timer = deadlineAt === undefined ? undefined : setTimeout(() => fail(timedOut()), deadlineAt - Date.now());
      if (watchCaller) caller.addEventListener("abort", onAbort, { once: true });
      result.then(
        (value) => {
          stopWatching();
          // Ended meanwhile by watch() (the same deadline or abort, seen first): that is the call's outcome, as on the network.
          if (endedWith) reject(endedWith);
          else resolve(value);
        },
        (error: unknown) => {
          stopWatching();
          reject(error);
        },
      );
    });
  }

  function watch(): () => void {
    const caller = init.requestSignal;
    const onAbort = () => endWith(ConnectError.from(caller.reason, Code.Canceled));
    const watchCaller = caller !== UNWATCHED_SIGNAL;
    if (watchCaller) caller.addEventListener("abort", onAbort, { once: true });
    const timer = deadlineAt === undefined ? undefined : setTimeout(() => endWith(new ConnectError("the operation timed out", Code.DeadlineExceeded)), deadlineAt - Date.now());
    return () => {
      clearTimeout(timer);
      if (watchCaller) caller.removeEventListener("abort", onAbort);
    };
  }

  return { context, outcome, end: () => endWith(CALL_ENDED), watch };
}
