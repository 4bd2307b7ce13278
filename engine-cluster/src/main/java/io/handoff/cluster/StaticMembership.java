package io.handoff.cluster;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import static java.util.Objects.requireNonNull;

/**
 * The router's {@code --prefill} and {@code --decode} lists: members that never change, each named by its URL, with
 * no incarnation known in advance (the router reads it from each server's {@code /bootstrap}).
 */
public final class StaticMembership
        implements Membership
{
    private final MembershipView view;

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
    public void start(Consumer<MembershipView> listener)
    {
        listener.accept(view);
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
