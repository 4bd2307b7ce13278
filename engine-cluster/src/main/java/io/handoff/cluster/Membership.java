package io.handoff.cluster;

import java.io.IOException;
import java.util.function.Consumer;

/**
 * A source of the cluster's membership that the router follows: a fixed list ({@link StaticMembership}), the
 * registrations under an etcd prefix, or the pods a Kubernetes label selector picks.
 */
public interface Membership
        extends AutoCloseable
{
    /**
     * Reads the current membership, hands it to {@code listener}, then follows it: every change (a member added,
     * removed, draining, a new incarnation, the store lost or back) is handed over as a whole new view. Views are
     * handed over one at a time, in order. Returns once the first view was handed over.
     *
     * @throws IOException when the store cannot be read at all at start (there is no last known membership to keep)
     */
    void start(Consumer<MembershipView> listener)
            throws IOException, InterruptedException;

    /** The last view handed over (empty before {@link #start}). */
    MembershipView current();

    /** Where it reads membership from, for logs and {@code handoff cluster status}: e.g. {@code etcd http://10.0.0.2:2379 /handoff/members/}. */
    String describe();

    /**
     * The server listed as member {@code memberId} reports another role, {@code role} (its role was switched): a membership
     * that learns roles only from the servers themselves (static lists) lists it so from now on and hands over the new view;
     * true when it did. Stores the servers register in (etcd, Kubernetes) learn it from the server's new registration.
     */
    default boolean roleReported(String memberId, MemberRole role)
    {
        return false;
    }

    /** Stops following; no view is handed over after it returns. */
    @Override
    void close();
}
