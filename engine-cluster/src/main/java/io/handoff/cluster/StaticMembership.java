package io.handoff.cluster;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * The router's {@code --prefill} and {@code --decode} lists: members named by their URL, with no incarnation known in
 * advance (the router reads it from each server's {@code /bootstrap}). The list never changes; a server's role does when
 * the server reports another one (a role switch, {@link #roleReported}).
 */
public final class StaticMembership
        implements Membership
{
    private volatile MembershipView view;
    private Consumer<MembershipView> listener;

    public StaticMembership(List<URI> prefills, List<URI> decodes)
    {
        List<Member> members = new ArrayList<>();
        requireNonNull(prefills, "prefills is null").forEach(url -> members.add(member(url, MemberRole.PREFILL)));
        requireNonNull(decodes, "decodes is null").forEach(url -> members.add(member(url, MemberRole.DECODE)));
        this.view = MembershipView.of(members);
    }

    private static Member member(URI url, MemberRole role)
    {
        URI address = Member.httpAddress(url);
        return new Member(address.toString(), role, "", address, "", 0, false);
    }

    @Override
    public synchronized void start(Consumer<MembershipView> listener)
    {
        this.listener = requireNonNull(listener, "listener is null");
        listener.accept(view);
    }

    @Override
    public synchronized boolean roleReported(String memberId, MemberRole role)
    {
        List<Member> members = new ArrayList<>();
        boolean changed = false;
        for (Member member : view.members()) {
            if (member.id().equals(memberId) && member.role() != role) {
                members.add(member(member.http(), role));
                changed = true;
            }
            else {
                members.add(member);
            }
        }
        if (!changed) {
            return false;
        }
        view = MembershipView.of(members);
        if (listener != null) {
            listener.accept(view);
        }
        return true;
    }

    @Override
    public MembershipView current()
    {
        return view;
    }

    @Override
    public String describe()
    {
        return "static lists (--prefill, --decode)";
    }

    @Override
    public void close()
    {
    }
}
