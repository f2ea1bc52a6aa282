import { createLogger, stopOnSignal } from "@orvado/core";
import { loadEdgeConfig, startEdge } from "./index.ts";

const config = loadEdgeConfig();
const logger = createLogger("edge");
const edge = await startEdge(config, { logger });
logger.info({ url: edge.url }, "edge listening");
stopOnSignal(edge, logger);
