package io.handoff.core.scheduler;

import io.handoff.spi.transfer.RoomKey;

import static java.util.Objects.requireNonNull;

/**
 * A disaggregated request's transfer session, as the router assigned it.
 *
 * @param bootstrap the prefill's bootstrap address ({@code host:port}) on a decode; empty on a prefill
 */
public record RoomTicket(RoomKey room, String bootstrap)
{
    public RoomTicket
    {
        requireNonNull(room, "room is null");
        requireNonNull(bootstrap, "bootstrap is null");
    }
}
