-- `lineup fleet compare $1 $2`: every member of either build, keyed by type and member name
-- (`+OFFSET` where the evidence named none), with its offsets, hosts and sums in each build
-- (columns a_* and b_*; a_build is null where build $1 has no such member). `moved`: its
-- offsets differ between the builds. `change`: `new`, `gone`, or `better` / `worse` / `same`
-- by cost per host (transfers per host, or writes per host where neither build has
-- transfers), `same` within a relative 1e-9.
WITH k AS (
  SELECT CAST(build AS STRING) AS build, "type",
         COALESCE(member, '+' || CAST("offset" AS STRING), '?') AS member,
         "offset", host, transfers, loads, stores, rmw
  FROM rows WHERE build = $1 OR build = $2
), m AS (
  SELECT build, "type", member,
         MIN("offset") AS off_min, MAX("offset") AS off_max,
         COUNT(DISTINCT host) AS hosts,
         SUM(transfers) AS transfers, SUM(stores + rmw) AS writes,
         SUM(loads + stores + rmw) AS accesses
  FROM k GROUP BY build, "type", member
), j AS (
  SELECT COALESCE(a."type", b."type") AS "type", COALESCE(a.member, b.member) AS member,
         a.build AS a_build, a.off_min AS a_offset, a.off_max AS a_offset_max,
         a.hosts AS a_hosts, a.transfers AS a_transfers, a.writes AS a_writes,
         a.accesses AS a_accesses,
         b.build AS b_build, b.off_min AS b_offset, b.off_max AS b_offset_max,
         b.hosts AS b_hosts, b.transfers AS b_transfers, b.writes AS b_writes,
         b.accesses AS b_accesses,
         CASE WHEN a.transfers > 0 OR b.transfers > 0
              THEN a.transfers / GREATEST(a.hosts, 1) ELSE a.writes / GREATEST(a.hosts, 1)
         END AS x,
         CASE WHEN a.transfers > 0 OR b.transfers > 0
              THEN b.transfers / GREATEST(b.hosts, 1) ELSE b.writes / GREATEST(b.hosts, 1)
         END AS y
  FROM (SELECT * FROM m WHERE build = $1) a
  FULL OUTER JOIN (SELECT * FROM m WHERE build = $2) b
    ON a."type" = b."type" AND a.member = b.member
)
SELECT "type", member,
       a_build, a_offset, a_offset_max, a_hosts, a_transfers, a_writes, a_accesses,
       b_build, b_offset, b_offset_max, b_hosts, b_transfers, b_writes, b_accesses,
       COALESCE(a_build IS NOT NULL AND b_build IS NOT NULL
                AND ((a_offset IS DISTINCT FROM b_offset)
                     OR (a_offset_max IS DISTINCT FROM b_offset_max)), FALSE) AS moved,
       CASE WHEN a_build IS NULL THEN 'new'
            WHEN b_build IS NULL THEN 'gone'
            WHEN ABS(y - x) <= 1e-9 * GREATEST(ABS(x), ABS(y)) THEN 'same'
            WHEN y < x THEN 'better'
            ELSE 'worse' END AS change
FROM j
ORDER BY "type", member
