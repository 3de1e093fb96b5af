package dev.lockedin.ycsb;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * A YCSB binding for Redis-protocol (RESP2) servers, on Jedis.
 *
 * <p>One record is one Redis hash: the YCSB key is the Redis key (the YCSB table name is
 * ignored, as in YCSB's own redis binding), each YCSB field a hash field. The commands sent:
 *
 * <ul>
 *   <li>{@code init}: connect, then {@code PING} (fails fast when the server is not there);
 *   <li>{@code read}: {@code HGETALL key} (all fields) or {@code HMGET key f...} (a subset);
 *   <li>{@code insert}, {@code update}: {@code HSET key f v [f v ...]}, or {@code HMSET} with
 *       {@code redis.write=hmset};
 *   <li>{@code delete}: {@code DEL key};
 *   <li>{@code scan}: not implemented ({@link Status#NOT_IMPLEMENTED}); YCSB's redis binding
 *       keeps a sorted-set index for it, which the locked-in server lacks, and workload A never
 *       scans.
 * </ul>
 *
 * <p>Jedis is configured so that it sends nothing else on connect: no {@code CLIENT SETINFO}
 * ({@link ClientSetInfoConfig#DISABLED}), no {@code HELLO} (no protocol set, so RESP2), no
 * {@code AUTH}, {@code CLIENT SETNAME} or {@code SELECT} (no password, name or database).
 *
 * <p>YCSB creates one {@code DB} instance per client thread and calls {@link #init()} in that
 * thread, so each thread has its own connection; an instance is never shared between threads.
 *
 * <p>Properties: {@code redis.host} (default {@value #DEFAULT_HOST}), {@code redis.port}
 * (default {@value #DEFAULT_PORT}), {@code redis.timeout} (connect and socket timeout in
 * milliseconds, default {@value #DEFAULT_TIMEOUT_MS}), {@code redis.write} ({@code hset}, the
 * default, or {@code hmset}).
 *
 * <p>Errors (a Redis error reply, a lost connection, a timeout) are returned as {@link
 * Status#ERROR}, which YCSB counts as {@code [OP], Return=ERROR, n}; the first occurrence of
 * each distinct error is printed on stderr, and {@link #cleanup()} prints how many operations
 * failed on that connection. A connection that breaks is not reopened: every later operation
 * on it fails too, so a broken run is visible in the counts.
 */
public class RedisClient extends DB {
  public static final String HOST_PROPERTY = "redis.host";
  public static final String PORT_PROPERTY = "redis.port";
  public static final String TIMEOUT_PROPERTY = "redis.timeout";
  public static final String WRITE_PROPERTY = "redis.write";

  public static final String DEFAULT_HOST = "127.0.0.1";
  public static final int DEFAULT_PORT = 6379;
  public static final int DEFAULT_TIMEOUT_MS = 10000;

  /** Distinct error messages already printed, shared by all threads. */
  private static final Set<String> LOGGED = ConcurrentHashMap.newKeySet();
  /** Bound on {@link #LOGGED}, so a storm of distinct messages cannot flood stderr. */
  private static final int MAX_LOGGED = 32;
  private static final AtomicBoolean LOG_LIMIT_REPORTED = new AtomicBoolean();

  private Jedis jedis;
  private String endpoint;
  private boolean useHmset;
  private long errors;

  @Override
  public void init() throws DBException {
    Properties props = getProperties();
    String host = props.getProperty(HOST_PROPERTY, DEFAULT_HOST);
    int port = intProperty(props, PORT_PROPERTY, DEFAULT_PORT);
    int timeout = intProperty(props, TIMEOUT_PROPERTY, DEFAULT_TIMEOUT_MS);
    String write = props.getProperty(WRITE_PROPERTY, "hset");
    switch (write) {
      case "hset":
        useHmset = false;
        break;
      case "hmset":
        useHmset = true;
        break;
      default:
        throw new DBException(WRITE_PROPERTY + " must be hset or hmset, not '" + write + "'");
    }
    endpoint = host + ":" + port;

    JedisClientConfig config =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(timeout)
            .socketTimeoutMillis(timeout)
            .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
            .build();
    String pong;
    try {
      jedis = new Jedis(new HostAndPort(host, port), config);
      pong = jedis.ping();
    } catch (RuntimeException e) {
      closeQuietly();
      throw new DBException("cannot connect to Redis at " + endpoint + ": " + e, e);
    }
    if (!"PONG".equals(pong)) {
      closeQuietly();
      throw new DBException("PING to " + endpoint + " answered '" + pong + "', not PONG");
    }
  }

  @Override
  public void cleanup() throws DBException {
    if (errors > 0) {
      System.err.println(
          "[redis-binding] " + errors + " operation(s) failed on the connection to " + endpoint);
    }
    if (jedis == null) {
      return;
    }
    try {
      jedis.close();
    } catch (RuntimeException e) {
      throw new DBException("closing the connection to " + endpoint + " failed: " + e, e);
    } finally {
      jedis = null;
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    try {
      if (fields == null) {
        Map<byte[], byte[]> all = jedis.hgetAll(bytes(key));
        if (all.isEmpty()) {
          return Status.NOT_FOUND;
        }
        for (Map.Entry<byte[], byte[]> e : all.entrySet()) {
          result.put(string(e.getKey()), new ByteArrayByteIterator(e.getValue()));
        }
        return Status.OK;
      }

      byte[][] names = new byte[fields.size()][];
      int i = 0;
      for (String f : fields) {
        names[i++] = bytes(f);
      }
      List<byte[]> values = jedis.hmget(bytes(key), names);
      if (values.size() != names.length) {
        return fail("READ", "HMGET returned " + values.size() + " values for " + names.length
            + " fields");
      }
      Iterator<String> name = fields.iterator();
      for (byte[] v : values) {
        String f = name.next();
        if (v != null) {
          result.put(f, new ByteArrayByteIterator(v));
        }
      }
      // HMGET cannot tell a missing key from missing fields: nothing found is NOT_FOUND.
      return result.isEmpty() ? Status.NOT_FOUND : Status.OK;
    } catch (RuntimeException e) {
      return fail("READ", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    return Status.NOT_IMPLEMENTED;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return write("UPDATE", key, values);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return write("INSERT", key, values);
  }

  @Override
  public Status delete(String table, String key) {
    try {
      return jedis.del(bytes(key)) == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (RuntimeException e) {
      return fail("DELETE", e);
    }
  }

  private Status write(String op, String key, Map<String, ByteIterator> values) {
    if (values.isEmpty()) {
      // HSET/HMSET need at least one field; YCSB never writes an empty record.
      return fail(op, "no fields to write");
    }
    Map<byte[], byte[]> hash = new HashMap<>(values.size() * 2);
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      hash.put(bytes(e.getKey()), e.getValue().toArray());
    }
    try {
      if (useHmset) {
        String reply = jedis.hmset(bytes(key), hash);
        return "OK".equals(reply) ? Status.OK : fail(op, "HMSET answered '" + reply + "'");
      }
      jedis.hset(bytes(key), hash); // the count of new fields: 0 on an update, not a failure
      return Status.OK;
    } catch (RuntimeException e) {
      return fail(op, e);
    }
  }

  private Status fail(String op, RuntimeException e) {
    return fail(op, e.getClass().getName() + ": " + e.getMessage());
  }

  private Status fail(String op, String message) {
    errors++;
    String line = op + " on " + endpoint + " failed: " + message;
    if (LOGGED.size() < MAX_LOGGED) {
      if (LOGGED.add(line)) {
        System.err.println("[redis-binding] " + line + " (each distinct error is printed once)");
      }
    } else if (!LOGGED.contains(line) && LOG_LIMIT_REPORTED.compareAndSet(false, true)) {
      System.err.println("[redis-binding] " + MAX_LOGGED
          + " distinct errors printed; further distinct errors are only counted");
    }
    return Status.ERROR;
  }

  private void closeQuietly() {
    if (jedis != null) {
      try {
        jedis.close();
      } catch (RuntimeException ignored) {
        // init already fails with the first error
      }
      jedis = null;
    }
  }

  private static int intProperty(Properties props, String name, int dflt) throws DBException {
    String v = props.getProperty(name);
    if (v == null) {
      return dflt;
    }
    try {
      int n = Integer.parseInt(v.trim());
      if (n <= 0) {
        throw new NumberFormatException("not positive");
      }
      return n;
    } catch (NumberFormatException e) {
      throw new DBException(name + " must be a positive integer, not '" + v + "'");
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String string(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
