import assert from "node:assert/strict";
import {
  createLogger,
  formatText,
  LOG_FORMATS,
  LOG_LEVELS,
  LogFlagError,
  parseLogFormat,
  parseLogLevel,
} from "./log.ts";

Deno.test("parseLogLevel and parseLogFormat accept exactly their values", () => {
  for (const level of LOG_LEVELS) assert.equal(parseLogLevel(level), level);
  for (const format of LOG_FORMATS) assert.equal(parseLogFormat(format), format);
  assert.throws(
    () => parseLogLevel("verbose"),
    (e: unknown) =>
      e instanceof LogFlagError &&
      e.message === '--log-level: expected debug, info, warn or error, not "verbose"',
  );
  assert.throws(
    () => parseLogFormat("JSON"),
    (e: unknown) =>
      e instanceof LogFlagError && e.message === '--log-format: expected text or json, not "JSON"',
  );
  assert.throws(() => parseLogLevel(""), LogFlagError);
  assert.throws(() => parseLogLevel("INFO", "LOG_LEVEL"), /^LogFlagError: LOG_LEVEL: /);
});

Deno.test("the level filters; json lines carry every field", () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "warn",
    fields: { component: "c" },
    write: (l) => lines.push(l),
  });
  log.info("dropped");
  log.warn("kept", { error: new Error("boom"), n: 2 });
  assert.equal(lines.length, 1);
  const { time, ...rest } = JSON.parse(lines[0]);
  assert.ok(!Number.isNaN(Date.parse(time)));
  assert.deepEqual(rest, { level: "warn", msg: "kept", component: "c", error: "boom", n: 2 });
});

Deno.test("text format: time LEVEL msg key=value, quoted when needed, kept by with()", () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "debug",
    format: "text",
    fields: { component: "daemon" },
    write: (l) => lines.push(l),
  }).with({ node: "n1" });
  log.debug("host access", { mode: "nsenter", reason: "other namespace", prefix: ["a", "b"] });
  assert.equal(lines.length, 1);
  assert.match(
    lines[0],
    /^\d{4}-\d\d-\d\dT[\d:.]+Z DEBUG host access component=daemon node=n1 mode=nsenter reason="other namespace" prefix=\["a","b"\]\n$/,
  );
  assert.equal(
    formatText({ time: "T", level: "info", msg: "m", a: 'x"y', b: "k=v", c: 3, d: undefined }),
    'T INFO  m a="x\\"y" b="k=v" c=3 d=undefined',
  );
});
