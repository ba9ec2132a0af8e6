-- Stream reads cache their simulcast outputs (src/live/livestream-routes.ts): on a libSQL server another process's
-- change to an output (added, removed, a new status) must bump the commit counter like the other cached tables (0017).
CREATE TRIGGER `change_version_live_outputs_insert` AFTER INSERT ON `live_outputs` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_live_outputs_update` AFTER UPDATE ON `live_outputs` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_live_outputs_delete` AFTER DELETE ON `live_outputs` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
