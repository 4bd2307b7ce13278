package io.handoff.router;

import io.handoff.cluster.Member;
import io.handoff.cluster.MemberRole;
import io.handoff.cluster.Membership;
import io.handoff.cluster.MembershipView;

import java.net.URI;
import java.util.List;
import java.util.function.Consumer;

/**
 * A membership source a test drives: each {@link #publish} hands the router a new view at once, on the test's
 * thread, as a store's watch would on its own. What the router does with views is under test, not how a store
 * produces them (the etcd and Kubernetes sources have their own tests against etcd and the API mock).
 */
final class ScriptedMembership
        implements Membership
{
    private volatile Consumer<MembershipView> listener;
    private volatile MembershipView current;
    volatile boolean closed;

    ScriptedMembership(MembershipView first)
    {
        this.current = first;
    }

    static Member member(String id, MemberRole role, String incarnation, URI http, boolean draining)
    {
        return new Member(id, role, incarnation, http, "c0ffee", 0, draining);
    }

    static MembershipView view(Member... members)
    {
        return MembershipView.of(List.of(members));
    }

    synchronized void publish(MembershipView view)
    {
        current = view;
        listener.accept(view);
    }

    @Override
    public synchronized void start(Consumer<MembershipView> listener)
    {
        this.listener = listener;
        listener.accept(current);
    }

    @Override
    public MembershipView current()
    {
        return current;
    }

    @Override
    public String describe()
    {
        return "a scripted membership";
    }

    @Override
    public void close()
    {
        closed = true;
    }
}
