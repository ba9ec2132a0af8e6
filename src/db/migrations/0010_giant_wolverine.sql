CREATE INDEX `actors_deleted` ON `actors` (`deleted_at`) WHERE deleted_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `rate_limits_window` ON `rate_limits` (`window_start`);--> statement-breakpoint
CREATE INDEX `uploads_expires` ON `uploads` (`expires_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_settled` ON `webhook_deliveries` (`status`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_endpoints_deleted` ON `webhook_endpoints` (`deleted_at`) WHERE deleted_at IS NOT NULL;