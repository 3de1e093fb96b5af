package dev.lockedin.ycsb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * Round trips through {@link RedisClient} against a live Redis-protocol server.
 *
 * <p>Runs when {@code REDIS_TEST_PORT} is set (host {@code REDIS_TEST_HOST}, default
 * 127.0.0.1); without it every test is skipped and the reason printed. Set, it is required: a
 * bad port or no server there fails every test (a server that did not come up must not pass as
 * skipped). Keys are prefixed with a per-run tag and deleted afterwards; the server's
 * other keys are left alone.
 */
class RedisClientTest {
  private static String host;
  private static int port;
  /** Why the tests cannot run, or null when a server answered. */
  private static String skipReason;
  /** Whether REDIS_TEST_PORT was set: then a missing server is a failure, not a skip. */
  private static boolean required;

  private final String tag = "ycsb-binding-test:" + System.nanoTime() + ":";
  private final List<String> keys = new ArrayList<>();
  private RedisClient db;

  @BeforeAll
  static void serverReachable() {
    String p = System.getenv("REDIS_TEST_PORT");
    host = System.getenv().getOrDefault("REDIS_TEST_HOST", "127.0.0.1");
    String reason = null;
    required = p != null && !p.isBlank();
    if (!required) {
      reason = "REDIS_TEST_PORT is not set";
    } else {
      try {
        port = Integer.parseInt(p.trim());
        try (Socket s = new Socket()) {
          s.connect(new InetSocketAddress(host, port), 1000);
        }
      } catch (NumberFormatException e) {
        reason = "REDIS_TEST_PORT='" + p + "' is not a port number";
      } catch (IOException e) {
        reason = "no server reachable at " + host + ":" + p + " (" + e.getMessage() + ")";
      }
    }
    if (reason != null) {
      System.out.println(
          "[RedisClientTest] " + (required ? "every test fails: " : "all tests skipped: ") + reason);
    }
    skipReason = reason;
  }

  @BeforeEach
  void connect() throws DBException {
    // Per test rather than in @BeforeAll, so each test is reported as skipped.
    if (required) {
      Assertions.assertNull(skipReason, skipReason);
    }
    Assumptions.assumeTrue(skipReason == null, skipReason);
    db = open("hset");
  }

  @AfterEach
  void cleanUp() throws DBException {
    if (db == null) {
      return;
    }
    for (String k : keys) {
      db.delete("usertable", k);
    }
    db.cleanup();
  }

  private RedisClient open(String write) throws DBException {
    RedisClient c = new RedisClient();
    Properties props = new Properties();
    props.setProperty("redis.host", host);
    props.setProperty("redis.port", Integer.toString(port));
    props.setProperty("redis.timeout", "5000");
    props.setProperty("redis.write", write);
    c.setProperties(props);
    c.init();
    return c;
  }

  /** What a test does with a connection of its own. */
  private interface ClientBody {
    void run(RedisClient c) throws DBException;
  }

  /**
   * Runs {@code body} on a connection of its own (write mode {@code write}, as in {@link
   * #open}), cleaned up afterwards whatever the body does.
   */
  private void withClient(String write, ClientBody body) throws DBException {
    RedisClient c = open(write);
    try {
      body.run(c);
    } finally {
      c.cleanup();
    }
  }

  private String key(String name) {
    String k = tag + name;
    keys.add(k);
    return k;
  }

  private static Map<String, ByteIterator> record(int fields, String value) {
    Map<String, ByteIterator> m = new HashMap<>();
    for (int i = 0; i < fields; i++) {
      m.put("field" + i, new ByteArrayByteIterator((value + i).getBytes()));
    }
    return m;
  }

  private static Map<String, String> strings(Map<String, ByteIterator> m) {
    Map<String, String> out = new HashMap<>();
    m.forEach((k, v) -> out.put(k, v.toString()));
    return out;
  }

  private static Map<String, String> expected(int fields, String value) {
    return strings(record(fields, value));
  }

  /** Every field of the record {@code k} as {@code c} reads it, as strings. */
  private static Map<String, String> readAll(RedisClient c, String k) {
    Map<String, ByteIterator> got = new HashMap<>();
    assertEquals(Status.OK, c.read("usertable", k, null, got));
    return strings(got);
  }

  /**
   * Updates the record {@code k}, which holds {@code before}, through {@code c} with {@code
   * changes}, and checks that it then reads back as {@code before} with the changes applied.
   */
  private static void updateAndCheck(
      RedisClient c, String k, Map<String, String> before, Map<String, String> changes) {
    Map<String, ByteIterator> upd = new HashMap<>();
    changes.forEach((f, v) -> upd.put(f, new ByteArrayByteIterator(v.getBytes())));
    assertEquals(Status.OK, c.update("usertable", k, upd));
    Map<String, String> want = new HashMap<>(before);
    want.putAll(changes);
    assertEquals(want, readAll(c, k));
  }

  @Test
  void insertThenReadAllFields() {
    String k = key("all");
    assertEquals(Status.OK, db.insert("usertable", k, record(10, "v")));
    assertEquals(expected(10, "v"), readAll(db, k));
  }

  @Test
  void readFieldSubset() {
    String k = key("subset");
    assertEquals(Status.OK, db.insert("usertable", k, record(10, "v")));
    Set<String> fields = new LinkedHashSet<>(List.of("field7", "field2", "nosuchfield"));
    Map<String, ByteIterator> got = new HashMap<>();
    assertEquals(Status.OK, db.read("usertable", k, fields, got));
    assertEquals(Map.of("field7", "v7", "field2", "v2"), strings(got));
  }

  @Test
  void updateChangesOnlyTheGivenFields() {
    String k = key("update");
    assertEquals(Status.OK, db.insert("usertable", k, record(10, "v")));
    updateAndCheck(db, k, expected(10, "v"), Map.of("field3", "new3", "field9", "new9"));
  }

  @Test
  void deleteThenReadIsNotFound() {
    String k = key("delete");
    assertEquals(Status.OK, db.insert("usertable", k, record(3, "v")));
    assertEquals(Status.OK, db.delete("usertable", k));
    assertEquals(Status.NOT_FOUND, db.read("usertable", k, null, new HashMap<>()));
    assertEquals(Status.NOT_FOUND, db.read("usertable", k, Set.of("field0"), new HashMap<>()));
    assertEquals(Status.NOT_FOUND, db.delete("usertable", k));
  }

  @Test
  void binaryValuesRoundTrip() {
    String k = key("binary");
    byte[] all = new byte[256];
    for (int i = 0; i < all.length; i++) {
      all[i] = (byte) i;
    }
    Map<String, ByteIterator> rec = new HashMap<>();
    rec.put("field0", new ByteArrayByteIterator(all));
    assertEquals(Status.OK, db.insert("usertable", k, rec));
    Map<String, ByteIterator> got = new HashMap<>();
    assertEquals(Status.OK, db.read("usertable", k, Set.of("field0"), got));
    assertArrayEquals(all, got.get("field0").toArray());
  }

  @Test
  void hmsetModeRoundTrip() throws DBException {
    withClient("hmset", hm -> {
      String k = key("hmset");
      assertEquals(Status.OK, hm.insert("usertable", k, record(4, "h")));
      updateAndCheck(hm, k, expected(4, "h"), Map.of("field1", "x"));
    });
  }

  @Test
  void errorReplyIsStatusError() {
    String k = key("wrongtype");
    try (Jedis raw = new Jedis(new HostAndPort(host, port), DefaultJedisClientConfig.builder()
        .clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build())) {
      assertEquals("OK", raw.set(k, "a string, not a hash"));
    }
    assertEquals(Status.ERROR, db.read("usertable", k, null, new HashMap<>()));
    assertEquals(Status.ERROR, db.update("usertable", k, record(1, "v")));
  }

  @Test
  void scanIsNotImplemented() {
    assertEquals(Status.NOT_IMPLEMENTED,
        db.scan("usertable", "user0", 10, null, new Vector<HashMap<String, ByteIterator>>()));
  }

  @Test
  void connectionsAreIndependent() throws DBException {
    withClient("hset", other -> {
      String k = key("shared");
      assertEquals(Status.OK, db.insert("usertable", k, record(2, "a")));
      Map<String, ByteIterator> got = new HashMap<>();
      assertEquals(Status.OK, other.read("usertable", k, null, got));
      assertTrue(got.size() == 2, "the second connection sees the first one's record");
    });
  }
}
