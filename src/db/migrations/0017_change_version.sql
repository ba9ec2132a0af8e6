-- A commit counter for the tables whose reads the hot path caches (src/db/change-feed.ts): on a libSQL server each
-- process polls it to know when its read cache is stale. Any writer (another process, the CLI, raw SQL) bumps it
-- through these triggers, so no code path can forget to.
CREATE TABLE `change_version` (`id` integer PRIMARY KEY NOT NULL CHECK (`id` = 1), `v` integer NOT NULL);
--> statement-breakpoint
INSERT INTO `change_version` (`id`, `v`) VALUES (1, 0);
--> statement-breakpoint
CREATE TRIGGER `change_version_organizations_insert` AFTER INSERT ON `organizations` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_organizations_update` AFTER UPDATE ON `organizations` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_organizations_delete` AFTER DELETE ON `organizations` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_api_keys_insert` AFTER INSERT ON `api_keys` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_api_keys_update` AFTER UPDATE ON `api_keys` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_api_keys_delete` AFTER DELETE ON `api_keys` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_actors_insert` AFTER INSERT ON `actors` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_actors_update` AFTER UPDATE ON `actors` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_actors_delete` AFTER DELETE ON `actors` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_signing_keys_insert` AFTER INSERT ON `signing_keys` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_signing_keys_update` AFTER UPDATE ON `signing_keys` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_signing_keys_delete` AFTER DELETE ON `signing_keys` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_playback_restrictions_insert` AFTER INSERT ON `playback_restrictions` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_playback_restrictions_update` AFTER UPDATE ON `playback_restrictions` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_playback_restrictions_delete` AFTER DELETE ON `playback_restrictions` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_webhook_endpoints_insert` AFTER INSERT ON `webhook_endpoints` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_webhook_endpoints_update` AFTER UPDATE ON `webhook_endpoints` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `change_version_webhook_endpoints_delete` AFTER DELETE ON `webhook_endpoints` BEGIN UPDATE `change_version` SET `v` = `v` + 1 WHERE `id` = 1; END;
