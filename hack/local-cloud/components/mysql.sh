# MariaDB for Neutron and Octavia: its own datadir, socket and port, so it
# never touches a system instance. SQLite cannot run their migrations.

MYSQL_DIR=$CLOUD_STATE/mysql
MYSQL_SOCK=$CLOUD_RUN/mysql.sock
MYSQL_PASSWORD=kuryr-local
DB_URL_BASE="mysql+pymysql://cloud:$MYSQL_PASSWORD@127.0.0.1:$MYSQL_PORT"

# MariaDB 11.8 (2025.1) checks snapshot isolation by default: a row changed
# since a REPEATABLE READ transaction's snapshot fails it with error 1020,
# which Octavia's quota accounting (SELECT ... FOR UPDATE of one row per
# project) cannot retry: concurrent member deletions then leave load
# balancers PENDING_UPDATE for good. OpenStack is written for the classic
# behaviour, as its deployment tools configure it.
MYSQL_RELEASE_OPTS=(--innodb-snapshot-isolation=OFF)

mysql_cli() { "${IN_ROOT[@]}" mariadb --no-defaults -uroot -S "$MYSQL_SOCK" "$@"; }

start_mysql() {
  mkdir -p "$CLOUD_RUN"
  if [ ! -d "$MYSQL_DIR/mysql" ]; then
    mkdir -p "$MYSQL_DIR"
    run_logged mysql-install "${IN_ROOT[@]}" mariadb-install-db --no-defaults --datadir="$MYSQL_DIR" --user=root \
      --auth-root-authentication-method=socket --skip-test-db
  fi
  # Durability is worthless for a throwaway cloud; fsyncs are the main cost
  # of the migrations.
  start_bg mysql -- "${IN_ROOT[@]}" mariadbd --no-defaults --datadir="$MYSQL_DIR" --user=root \
    --socket="$MYSQL_SOCK" --port="$MYSQL_PORT" --bind-address=127.0.0.1 \
    --pid-file="$CLOUD_RUN/mysql.pidfile" --skip-log-bin \
    --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --sync-binlog=0 \
    --innodb-buffer-pool-size=128M --max-connections=1000 --skip-name-resolve "${MYSQL_RELEASE_OPTS[@]}"
  wait_for mysql 30 mysql_cli -e 'select 1'
  mysql_cli -e "
    CREATE USER IF NOT EXISTS 'cloud'@'127.0.0.1' IDENTIFIED BY '$MYSQL_PASSWORD';
    CREATE DATABASE IF NOT EXISTS neutron;
    CREATE DATABASE IF NOT EXISTS octavia;
    CREATE DATABASE IF NOT EXISTS keystone;
    GRANT ALL ON *.* TO 'cloud'@'127.0.0.1';"
}
