// @ts-check
// A driver's short flow through openapi-fetch, typed by the types openapi-typescript generated
// from the server's /openapi.json (paddock-api.d.ts beside this file; `tsc -p .` checks this
// file against them). Usage: node flow.mjs BASE_URL. Registers, makes a personal access token
// for a tool (upload, submit, read boards) and with it uploads the example session of the
// document, submits its best lap, reads the board and the driver's standing; checks that the
// token is refused (403) where its scopes do not reach and that a bad token is refused (401),
// each read as the error envelope.
import createClient from "openapi-fetch";

/** @typedef {import("./paddock-api.d.ts").paths} Paths */
/** @typedef {import("./paddock-api.d.ts").components["schemas"]} Schemas */

const baseUrl = (process.argv[2] ?? "").replace(/\/$/, "");
if (!baseUrl) throw new Error("usage: node flow.mjs BASE_URL");

/**
 * The example request body the document gives for `POST path`.
 * @param {any} document
 * @param {string} path
 */
function example(document, path) {
  return structuredClone(document.paths[path].post.requestBody.content["application/json"].example);
}

/**
 * The data of a successful answer; throws with the status and the error envelope otherwise.
 * @template T
 * @param {string} what
 * @param {{ data?: { data: T }, error?: Schemas["ErrorEnvelope"] | unknown, response: Response }} answer
 * @param {number} status
 * @returns {T}
 */
function expectData(what, answer, status) {
  if (answer.response.status !== status || !answer.data) {
    throw new Error(`${what}: expected ${status}, got ${answer.response.status}: ${JSON.stringify(answer.error)}`);
  }
  return answer.data.data;
}

/** @type {import("openapi-fetch").Client<Paths>} */
const api = createClient({ baseUrl });
const document = await (await fetch(`${baseUrl}/openapi.json`)).json();

/** @type {Schemas["RegisterRequest"]} */
const register = example(document, "/v1/auth/register");
register.email = `node-${crypto.randomUUID().slice(0, 12)}@example.com`;
const tokens = expectData("register", await api.POST("/v1/auth/register", { body: register }), 201);
const signedIn = { headers: { Authorization: `Bearer ${tokens.accessToken}` } };
const created = expectData(
  "token",
  await api.POST("/v1/tokens", {
    body: { name: "lap tool", scopes: ["sessions:write", "boards:submit", "boards:read"], expiresInDays: 7 },
    ...signedIn,
  }),
  201,
);
if (!created.token.startsWith("pdk_")) throw new Error(`token: ${JSON.stringify(created)}`);
// From here on the tool's own token, not the driver's sign-in.
const auth = { headers: { Authorization: `Bearer ${created.token}` } };

/** @type {Schemas["SessionUploadDto"]} */
const upload = example(document, "/v1/sessions");
upload.clientSessionId = crypto.randomUUID();
const receipt = expectData("upload", await api.POST("/v1/sessions", { body: upload, ...auth }), 201);

const best = upload.laps.reduce((a, b) => (b.lapTimeMs < a.lapTimeMs ? b : a));
const outcome = expectData(
  "submit",
  await api.POST("/v1/leaderboards/submit", {
    body: { sessionId: receipt.sessionId, lapTimeMs: best.lapTimeMs, qualityScore: best.qualityCombined },
    ...auth,
  }),
  200,
);
// Other runs against the same server may have set faster laps on the example's track.
if (!outcome.improved || !outcome.rank) throw new Error(`submit: ${JSON.stringify(outcome)}`);

const board = expectData(
  "board",
  await api.GET("/v1/leaderboards", { params: { query: { trackId: receipt.trackId } }, ...auth }),
  200,
);
if (!board.entries.some((entry) => entry.lapTimeMs === best.lapTimeMs)) {
  throw new Error(`board: ${JSON.stringify(board)}`);
}

const standing = expectData(
  "standing",
  await api.GET("/v1/leaderboards/me", { params: { query: { trackId: receipt.trackId } }, ...auth }),
  200,
);
if (standing.rank !== outcome.rank || standing.entry.lapTimeMs !== best.lapTimeMs) {
  throw new Error(`standing: ${JSON.stringify(standing)}`);
}

// The token was not given sessions:read.
const beyond = await api.GET("/v1/sessions", { ...auth });
if (beyond.response.status !== 403 || beyond.error?.success !== false || !beyond.error.error.includes("sessions:read")) {
  throw new Error(`403: ${beyond.response.status} ${JSON.stringify(beyond.error)}`);
}

const refused = await api.GET("/v1/leaderboards/me", {
  params: { query: { trackId: receipt.trackId } },
  headers: { Authorization: "Bearer not-a-token" },
});
// Typed from the operation's 401 answer, the ErrorEnvelope schema.
const envelope = refused.error;
if (refused.response.status !== 401 || envelope?.success !== false || typeof envelope.error !== "string") {
  throw new Error(`401: ${refused.response.status} ${JSON.stringify(refused.error)}`);
}

console.log("typescript client: register, a token, upload, submit, board, standing, a 403 and a 401 envelope: ok");
