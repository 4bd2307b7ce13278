package io.handoff.router;

/** How loaded a server is for a policy: in-flight requests for a prefill, estimated outstanding KV pages for a decode. */
@FunctionalInterface
interface Load
{
    /** Requests this router has in flight on a server: a prefill's load. */
    Load REQUESTS = Backend::inFlight;
    /** The KV pages this router's requests in flight on a server hold, as estimated ({@link RouteKey#pages}): a decode's load. */
    Load PAGES = Backend::pages;

    long of(Backend server);
}
