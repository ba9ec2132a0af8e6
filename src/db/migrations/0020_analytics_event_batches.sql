CREATE TABLE `analytics_event_batches` (
	`seq` integer PRIMARY KEY NOT NULL,
	`asset_id` text NOT NULL,
	`view_id` text NOT NULL,
	`first_t` integer NOT NULL,
	`received_at` integer NOT NULL,
	`events` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `analytics_event_batches_view` ON `analytics_event_batches` (`asset_id`,`view_id`,`first_t`,`seq`);--> statement-breakpoint
CREATE INDEX `analytics_event_batches_received` ON `analytics_event_batches` (`received_at`);--> statement-breakpoint
CREATE TABLE `analytics_writes` (
	`id` text PRIMARY KEY NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `analytics_writes_at` ON `analytics_writes` (`at`);--> statement-breakpoint
INSERT INTO `analytics_event_batches` (`asset_id`, `view_id`, `first_t`, `received_at`, `events`)
SELECT `asset_id`, `view_id`, min(`t`), `received_at`, json_group_array(json_array(`type`, `t`, `player_time`, `height`, `bitrate`, `code`, `startup_ms`))
FROM (SELECT * FROM `analytics_events` ORDER BY `seq`) GROUP BY `asset_id`, `view_id`, `received_at`;--> statement-breakpoint
DROP TABLE `analytics_events`;