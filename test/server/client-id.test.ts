/** How a client is known by its address (src/server/client-id.ts): IPv6 by its /64. */
import { describe, expect, it } from "vitest";
import { addressGroup } from "../../src/server/client-id.ts";

describe("addressGroup", () => {
  it("keeps IPv4 addresses (also IPv4-mapped ones) as they are", () => {
    expect(addressGroup("127.0.0.2")).toBe("127.0.0.2");
    expect(addressGroup("::ffff:10.1.2.3")).toBe("10.1.2.3");
  });

  it("counts IPv6 addresses by their /64: one machine's many addresses are one client", () => {
    const a = addressGroup("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
    expect(a).toBe("2001:db8:1:2::/64");
    expect(addressGroup("2001:db8:1:2::1")).toBe(a);
    expect(addressGroup("2001:0db8:0001:0002:ffff::")).toBe(a);
    expect(addressGroup("2001:db8:1:3::1")).not.toBe(a);
    expect(addressGroup("::1")).toBe("0:0:0:0::/64");
    expect(addressGroup("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressGroup(undefined)).toBe("unknown");
  });
});
