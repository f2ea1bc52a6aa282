// Types only: the console API's answers, declared by the routes in services/edge/src/console/api/answers.ts.
/** @type {import("../lib/answers.js").Loaded<import("../lib/answers.js").KeysAnswer>} */
// A page names what it loads, e.g. `/** @type {Loaded<KeysAnswer>} */ const keys = useLoad(() => get("/keys"))`,
// so tsc checks every field the page reads against what the API sends.

/** @typedef {import("../../src/console/api/answers.ts").SessionAnswer} SessionAnswer */
/** @typedef {import("../../src/console/api/answers.ts").AccountJson} AccountJson */
/** @typedef {import("../../src/console/api/answers.ts").BalanceAnswer} BalanceAnswer */
/** @typedef {import("../../src/console/api/answers.ts").SpendAnswer} SpendAnswer */
/** @typedef {import("../../src/console/api/answers.ts").KeysAnswer} KeysAnswer */
/** @typedef {import("../../src/console/api/answers.ts").KeyJson} KeyJson */
/** @typedef {import("../../src/console/api/answers.ts").NewKeyAnswer} NewKeyAnswer */
/** @typedef {import("../../src/console/api/answers.ts").ModelsAnswer} ModelsAnswer */
/** @typedef {import("../../src/console/api/answers.ts").UsagePage} UsagePage */
/** @typedef {import("../../src/console/api/answers.ts").UsageRowJson} UsageRowJson */
/** @typedef {import("../../src/console/api/answers.ts").RequestDetailAnswer} RequestDetailAnswer */
/** @typedef {import("../../src/console/api/answers.ts").PlaygroundAnswer} PlaygroundAnswer */
/** @typedef {import("../../src/console/api/answers.ts").AdminAccountsAnswer} AdminAccountsAnswer */
/** @typedef {import("../../src/console/api/answers.ts").AdminAccountAnswer} AdminAccountAnswer */
/** @typedef {import("../../src/console/api/answers.ts").AdminAccountDetail} AdminAccountDetail */
/** @typedef {import("../../src/console/api/answers.ts").StatementAnswer} StatementAnswer */
/** @typedef {import("../../src/console/api/answers.ts").OverviewAnswer} OverviewAnswer */
/** @typedef {import("../../src/console/api/answers.ts").ChannelsAnswer} ChannelsAnswer */
/** @typedef {import("../../src/console/api/answers.ts").ChannelResetAnswer} ChannelResetAnswer */
/** @typedef {import("../../src/console/api/answers.ts").PricesAnswer} PricesAnswer */
/** @typedef {import("../../src/console/api/answers.ts").AdminModelsAnswer} AdminModelsAnswer */

/**
 * What useLoad (components/ui.js) gives a page.
 * @template T
 * @typedef {{ data: T | null, error: import("./api.js").ApiError | null, loading: boolean, reload: () => void }} Loaded
 */

export {};
