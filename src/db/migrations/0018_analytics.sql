CREATE TABLE `analytics_events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`asset_id` text NOT NULL,
	`view_id` text NOT NULL,
	`type` text NOT NULL,
	`t` integer NOT NULL,
	`player_time` real NOT NULL,
	`height` integer,
	`bitrate` integer,
	`code` text,
	`startup_ms` integer,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `analytics_events_view` ON `analytics_events` (`asset_id`,`view_id`,`t`,`seq`);--> statement-breakpoint
CREATE INDEX `analytics_events_received` ON `analytics_events` (`received_at`);--> statement-breakpoint
CREATE TABLE `analytics_rollups` (
	`asset_id` text NOT NULL,
	`granularity` text NOT NULL,
	`bucket` integer NOT NULL,
	`org_id` text NOT NULL,
	`asset_kind` text NOT NULL,
	`views` integer NOT NULL,
	`watch_ms` integer NOT NULL,
	`stall_ms` integer NOT NULL,
	`stall_count` integer NOT NULL,
	`startup_ms_sum` integer NOT NULL,
	`started_views` integer NOT NULL,
	`error_views` integer NOT NULL,
	`exits_before_start` integer NOT NULL,
	PRIMARY KEY(`asset_id`, `granularity`, `bucket`)
);
--> statement-breakpoint
CREATE INDEX `analytics_rollups_org` ON `analytics_rollups` (`org_id`,`granularity`,`bucket`);--> statement-breakpoint
CREATE INDEX `analytics_rollups_bucket` ON `analytics_rollups` (`granularity`,`bucket`);--> statement-breakpoint
CREATE TABLE `analytics_views` (
	`asset_id` text NOT NULL,
	`view_id` text NOT NULL,
	`org_id` text NOT NULL,
	`asset_kind` text NOT NULL,
	`viewer_id` text NOT NULL,
	`country` text NOT NULL,
	`browser` text NOT NULL,
	`os` text NOT NULL,
	`device_type` text NOT NULL,
	`started_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	`end_seen_at` integer,
	`closed_at` integer,
	`watch_ms` integer,
	`startup_ms` integer,
	`stall_count` integer,
	`stall_ms` integer,
	`avg_bitrate` integer,
	`avg_height` integer,
	`errors` integer,
	`exit_before_start` integer,
	PRIMARY KEY(`asset_id`, `view_id`)
);
--> statement-breakpoint
CREATE INDEX `analytics_views_open` ON `analytics_views` (`last_seen_at`) WHERE closed_at IS NULL;--> statement-breakpoint
CREATE INDEX `analytics_views_asset` ON `analytics_views` (`asset_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `analytics_views_org` ON `analytics_views` (`org_id`,`started_at`);--> statement-breakpoint
CREATE INDEX `analytics_views_closed` ON `analytics_views` (`closed_at`);--> statement-breakpoint
CREATE TABLE `analytics_whep_samples` (
	`stream_id` text NOT NULL,
	`at` integer NOT NULL,
	`holder` text NOT NULL,
	`viewers` integer NOT NULL,
	PRIMARY KEY(`stream_id`, `at`, `holder`)
);
--> statement-breakpoint
CREATE INDEX `analytics_whep_samples_at` ON `analytics_whep_samples` (`at`);