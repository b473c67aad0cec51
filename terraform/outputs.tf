output "main_public_ip" {
  description = "Reserved (stable) public IP of the main droplet: point your domain's A record here."
  value       = digitalocean_reserved_ip.main.ip_address
}

output "main_private_ip" {
  description = "VPC address of the main droplet (Postgres 5432, Redis 6379, registry 5000, join service for workers)."
  value       = digitalocean_droplet.main.ipv4_address_private
}

output "worker_private_ips" {
  description = "VPC addresses of the worker droplets terraform manages (autoscaled ones are not listed)."
  value       = digitalocean_droplet.worker[*].ipv4_address_private
}

output "url" {
  description = "Where the arena answers once cloud-init has finished (HTTPS after the certbot step)."
  value       = "http://${local.public_host}/"
}

output "ssh_main" {
  description = "SSH into the main droplet (only from admin_cidrs)."
  value       = "ssh root@${digitalocean_reserved_ip.main.ip_address}"
}

output "worker_tag" {
  description = "Tag of terraform's worker droplets; the autoscaler's carry \"<name>-worker-auto\"."
  value       = digitalocean_tag.worker.name
}

output "agent_registry" {
  description = "Where agent images live (AGENT_REGISTRY): the managed registry, or the main droplet's private one."
  value       = var.agent_registry != "" ? var.agent_registry : "http://${digitalocean_droplet.main.ipv4_address_private}:5000/rl-arena"
}

output "join_service" {
  description = "The join service workers trade their one-time ticket at (private network only)."
  value       = "http://${digitalocean_droplet.main.ipv4_address_private}:${var.join_port}"
}

output "postgres_password" {
  description = "Postgres password of user arena (for backups from an admin machine through an SSH tunnel)."
  value       = random_password.postgres.result
  sensitive   = true
}
