import assert from "node:assert/strict";
import { parseNextLink } from "./link.ts";

const BASE = "http://127.0.0.1:5000/v2/os/tags/list?n=2";

Deno.test("relative next link resolves against the request URL", () => {
  assert.equal(
    parseNextLink('</v2/os/tags/list?last=b&n=2>; rel="next"', BASE)?.href,
    "http://127.0.0.1:5000/v2/os/tags/list?last=b&n=2",
  );
});

Deno.test("absolute link, unquoted rel, several links", () => {
  assert.equal(
    parseNextLink("<https://r.io/v2/x?last=1>; rel=next", BASE)?.href,
    "https://r.io/v2/x?last=1",
  );
  assert.equal(
    parseNextLink('</prev?a,b>; rel="prev", </v2/_catalog?last=q&n=2>; rel="next"', BASE)?.href,
    "http://127.0.0.1:5000/v2/_catalog?last=q&n=2",
  );
  assert.equal(
    parseNextLink('</n>; title="x"; rel="last next"', BASE)?.pathname,
    "/n",
  );
});

Deno.test("no next link", () => {
  assert.equal(parseNextLink(null, BASE), undefined);
  assert.equal(parseNextLink("", BASE), undefined);
  assert.equal(parseNextLink('</p>; rel="prev"', BASE), undefined);
});
