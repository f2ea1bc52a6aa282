import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type DescService, type MessageShape } from "@bufbuild/protobuf";

/**
 * A plain @grpc/grpc-js client for a service described in proto/, the way an
 * internal caller that does not use Connect would call it. Unary methods only.
 */
export function grpcJsClient(service: DescService, address: string, secret?: string) {
  const definition: Record<string, grpc.MethodDefinition<MessageShape<DescMessage>, MessageShape<DescMessage>>> = {};
  for (const method of service.methods) {
    if (method.methodKind !== "unary") continue;
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (value: MessageShape<DescMessage>) => Buffer.from(toBinary(method.input, create(method.input, value))),
      requestDeserialize: (bytes: Buffer) => fromBinary(method.input, bytes),
      responseSerialize: (value: MessageShape<DescMessage>) => Buffer.from(toBinary(method.output, value)),
      responseDeserialize: (bytes: Buffer) => fromBinary(method.output, bytes),
    };
  }
  const Client = grpc.makeGenericClientConstructor(definition, service.name);
  const client = new Client(address.replace(/^https?:\/\//, ""), grpc.credentials.createInsecure());
  return {
    client,
    /** Calls a unary method; rejects with the grpc-js ServiceError (its .code is the gRPC status). */
    call<R = unknown>(method: string, request: unknown): Promise<R> {
      const metadata = new grpc.Metadata();
      if (secret !== undefined) metadata.set("x-orvado-internal-secret", secret);
      return new Promise((resolve, reject) => {
        const fn = (client as unknown as Record<string, ((...args: unknown[]) => unknown) | undefined>)[method];
        if (!fn) return reject(new Error(`no unary method ${method}`));
        fn.call(client, request, metadata, (error: grpc.ServiceError | null, response: R) =>
          error ? reject(error) : resolve(response),
        );
      });
    },
    close: () => client.close(),
  };
}

export { grpc };
