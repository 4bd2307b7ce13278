package io.handoff.cluster;

import java.util.List;
import java.util.Optional;

import static java.util.Objects.requireNonNull;

/**
 * What a membership source knows at one moment: every member it lists, and whether that list may be out of date.
 *
 * @param members the members, at most one per id
 * @param stale why the list may be out of date (the store is unreachable): the last known members keep serving
 *         until the store answers again; empty while the source is in touch with its store
 */
public record MembershipView(List<Member> members, Optional<String> stale)
{
    public MembershipView
    {
        members = List.copyOf(requireNonNull(members, "members is null"));
        requireNonNull(stale, "stale is null");
        if (members.stream().map(Member::id).distinct().count() != members.size()) {
            throw new IllegalArgumentException("a membership view lists a member id more than once: " + members);
        }
    }

    public static MembershipView of(List<Member> members)
    {
        return new MembershipView(members, Optional.empty());
    }

    /** The same members, marked stale for {@code reason}. */
    public MembershipView staleBecause(String reason)
    {
        return new MembershipView(members, Optional.of(reason));
    }

    public List<Member> of(MemberRole role)
    {
        return members.stream().filter(member -> member.role() == role).toList();
    }
}
