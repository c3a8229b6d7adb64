import assert from "node:assert/strict";
import { shippedControllerV8Flags } from "./shipped_flags.ts";

Deno.test("shippedControllerV8Flags: the controller manifest's young-generation cap", async () => {
  assert.match(
    await shippedControllerV8Flags(),
    /^--max-semi-space-size=\d+,--heap-growing-percent=\d+$/,
  );
});
