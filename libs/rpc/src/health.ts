import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { health } from "@orvado/proto";

const { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus: Status } = health;

/** grpc.health.v1 for one server: "" and each served service name answer; others are unknown. */
export class HealthState {
  #serving = true;
  #waiters = new Set<() => void>();
  constructor(private readonly serviceNames: string[]) {}

  setServing(serving: boolean) {
    this.#serving = serving;
    for (const wake of this.#waiters) wake();
  }

  status(service: string) {
    if (service !== "" && !this.serviceNames.includes(service)) return null;
    return this.#serving ? Status.SERVING : Status.NOT_SERVING;
  }

  register(router: ConnectRouter) {
    const state = this;
    router.service(Health, {
      check(req) {
        const status = state.status(req.service);
        if (status === null) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
        return create(HealthCheckResponseSchema, { status });
      },
      async *watch(req, context) {
        while (!context.signal.aborted) {
          yield create(HealthCheckResponseSchema, { status: state.status(req.service) ?? Status.SERVICE_UNKNOWN });
          await new Promise<void>((resolve) => {
            const wake = () => {
              state.#waiters.delete(wake);
              resolve();
            };
            state.#waiters.add(wake);
            context.signal.addEventListener("abort", wake, { once: true });
          });
        }
      },
    });
  }
}
