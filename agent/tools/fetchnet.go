package tools

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// FetchConfig is how fetch_url reaches the web. The zero value fetches
// nothing without asking, over the system's resolver and network.
type FetchConfig struct {
	// Allow are the hosts fetched without asking, matched literally against
	// the URL's host (a name or an IP literal); "*" allows every host. A
	// private, loopback or link-local address is reached only for a host
	// named exactly (never through "*"), and plain HTTP only to such a
	// loopback host.
	Allow []string
	// MaxBytes bounds a body (the rest is cut); default DefaultFetchBytes.
	MaxBytes int64
	// Timeout bounds a fetch; default DefaultFetchTimeout.
	Timeout time.Duration
	// Resolve returns a host's addresses, Dial connects to one address
	// ("ip:port"), and TLS configures the TLS client: the system's by
	// default, replaced by tests (which never connect beyond loopback).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	TLS     *tls.Config
}

func (c FetchConfig) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultFetchBytes
}

func (c FetchConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultFetchTimeout
}

// allows reports whether the list allows host (listed), and whether it
// names it exactly (not through "*").
func (c FetchConfig) allows(host string) (listed, exact bool) {
	for _, h := range c.Allow {
		h = normalHost(strings.TrimSpace(h))
		switch {
		case h == host:
			return true, true
		case h == "*":
			listed = true
		}
	}
	return listed, false
}

// hostOf is a URL's host as the list matches it: lower case, without the
// port and an IPv6 literal's brackets, an IP in its canonical form.
func hostOf(u *url.URL) string { return normalHost(u.Hostname()) }

func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String()
	}
	return h
}

// isLoopbackName reports whether host is a loopback address or localhost.
func isLoopbackName(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback()
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// client is the HTTP client of one fetch: no cookies, no proxy, no
// credentials; every connection goes to an address checked by dial;
// redirect checks the hosts redirects lead to.
func (c FetchConfig) client(redirect func(*url.URL) error) *http.Client {
	tr := &http.Transport{
		Proxy:                  nil, // the address dialed must be the one checked
		DialContext:            c.dial,
		TLSClientConfig:        c.TLS,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  c.timeout(),
		MaxResponseHeaderBytes: 64 << 10,
		DisableKeepAlives:      true,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("stopped after %d redirects (a redirect loop?)", maxRedirects)
		}
		if err := redirect(req.URL); err != nil {
			return err
		}
		if _, err := c.checkURL(req.URL.String()); err != nil {
			return fmt.Errorf("redirected to %s: %w", req.URL, err)
		}
		return nil
	}}
}

// dial connects to addr ("host:port") at an address it checked: every
// address the host resolves to must be public, unless the list names the
// host exactly; the connection then goes to one of those addresses, never
// to a name resolved again (no DNS rebinding between check and connect).
func (c FetchConfig) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	host := normalHost(h)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		resolve := c.Resolve
		if resolve == nil {
			resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		if ips, err = resolve(ctx, host); err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("%s has no address", host)
		}
	}
	_, exact := c.allows(host)
	for _, ip := range ips {
		if why := notPublic(ip.Unmap()); why != "" && !exact {
			return nil, fmt.Errorf("%s resolves to %s, a %s address: fetch_url reaches such an address only for a host permissions.fetch (--allow-fetch) names exactly", host, ip.Unmap(), why)
		}
	}
	d := c.Dial
	if d == nil {
		d = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	var errs []error
	for _, ip := range ips {
		conn, err := d(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// special are address ranges that are not the public internet, besides
// those netip classifies (loopback, private, link-local, multicast).
var special = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "reserved"},
	{netip.MustParsePrefix("100.64.0.0/10"), "private (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b::/96"), "translated (NAT64)"},
	{netip.MustParsePrefix("2002::/16"), "translated (6to4)"},
}

// notPublic says why ip is not a public address ("" when it is).
func notPublic(ip netip.Addr) string {
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.why
		}
	}
	return ""
}
