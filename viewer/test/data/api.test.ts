import { describe, expect, it } from "vitest";
import { Api } from "../../src/data/api";

/** A Location and a History as far as Api.fromLocation uses them. */
function page(href: string) {
  const url = new URL(href);
  const calls: string[] = [];
  const loc = { href: url.href, search: url.search, pathname: url.pathname, hash: url.hash } as Location;
  const hist = { state: null, replaceState: (_s: unknown, _t: string, u: string) => calls.push(u) } as unknown as History;
  return { loc, hist, calls };
}

describe("the token", () => {
  it("is taken out of the address bar, other parameters and the view kept", () => {
    const { loc, hist, calls } = page("http://127.0.0.1:8765/?token=s3cret&x=1#step=2&color=ux");
    const api = Api.fromLocation(loc, hist);
    expect(api.token).toBe("s3cret");
    expect(api.headers()).toEqual({ Authorization: "Bearer s3cret" });
    expect(calls).toEqual(["/?x=1#step=2&color=ux"]);
  });

  it("leaves an address without one alone", () => {
    const { loc, hist, calls } = page("http://127.0.0.1:8765/#step=2");
    expect(Api.fromLocation(loc, hist).token).toBeNull();
    expect(calls).toEqual([]);
  });

  it("is never put in a URL, download links included", () => {
    const { loc, hist } = page("http://127.0.0.1:8765/?token=s3cret");
    const api = Api.fromLocation(loc, hist);
    const urls = [
      api.exportUrl("run", 0, "electrons", { format: "csv", where: "x > 1" }),
      api.pointsUrl("run", 0, "electrons", { budget: 1000 }),
      api.url("datasets"),
    ];
    for (const u of urls) {
      expect(u).not.toContain("s3cret");
      expect(new URL(u).searchParams.has("token")).toBe(false);
    }
    expect(urls[0]).toBe("http://127.0.0.1:8765/api/v1/datasets/run/steps/0/species/electrons/export?format=csv&where=x+%3E+1");
  });
});
