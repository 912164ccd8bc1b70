/// SQL text the stores execute, kept in one place so tests can run `EXPLAIN QUERY PLAN` on exactly
/// what a store executes. This part is the same in both dialects; each store adds its own queries
/// in an extension.
package enum FeedQueries {
    /// Every follow edge, by follower then followee (the index load); no parameters.
    package static let followEdges = "SELECT follower_id, followee_id FROM follows ORDER BY follower_id, followee_id"
}
