set -e
mkdir -p "$PGDATA" /var/run/postgresql && chown -R postgres:postgres "$PGDATA" /var/run/postgresql
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "$POSTGRES_PASSWORD" > /tmp/pw && chown postgres /tmp/pw
  su postgres -s /bin/sh -c "initdb -D $PGDATA -U $POSTGRES_USER --pwfile=/tmp/pw -A scram-sha-256 >/dev/null"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  su postgres -s /bin/sh -c "pg_ctl -D $PGDATA -o '-c listen_addresses=' -w start >/dev/null && PGPASSWORD=\$(cat /tmp/pw) psql -U $POSTGRES_USER -d postgres -c 'CREATE DATABASE $POSTGRES_DB' && pg_ctl -D $PGDATA -w stop >/dev/null"
  rm /tmp/pw
fi
exec su postgres -s /bin/sh -c "exec postgres -D $PGDATA -c listen_addresses='*'"
